# IQM speedup over cuSPARSE (failures as 1), 95% stratified bootstrap intervals: written by sparserl; run `gnuplot intervals.gp` to redraw.
set terminal pngcairo noenhanced size 900,338 font 'sans,10'
set output '/work/main/docs/examples/study-cut2-h200/tables/spmv-f32-val/intervals.png'
set linetype 1 lc rgb '#0072B2' lw 2 pt 7 ps 1.1
set linetype 2 lc rgb '#D55E00' lw 2 pt 7 ps 1.1
set linetype 3 lc rgb '#009E73' lw 2 pt 7 ps 1.1
set linetype 4 lc rgb '#CC79A7' lw 2 pt 7 ps 1.1
set linetype 5 lc rgb '#E69F00' lw 2 pt 7 ps 1.1
set linetype 6 lc rgb '#56B4E9' lw 2 pt 7 ps 1.1
set linetype 7 lc rgb '#000000' lw 2 pt 7 ps 1.1
set linetype 8 lc rgb '#F0E442' lw 2 pt 7 ps 1.1
set datafile missing 'NaN'
set grid xtics
unset key
set xrange [0.5247368884177178:1.1740537697034708]
set logscale x
set xtics ('0.7x' 0.7, '1x' 1.0)
set arrow from 1.0, graph 0 to 1.0, graph 1 nohead dt 2 lc rgb '#777777'
set multiplot layout 1,1 title 'IQM speedup over cuSPARSE (failures as 1), 95% stratified bootstrap intervals'
set title 'all (20 matrices)'
set xlabel 'speedup (cuSPARSE time / kernel time), log scale'
set yrange [7.5:-0.5]
set ytics ('template' 0, 'random' 1, 'grpo-hf' 2, 'grpo' 3, 'ppo' 4, 'reinforce' 5, 'sft-hf' 6, 'sft' 7)
plot '/work/main/docs/examples/study-cut2-h200/tables/spmv-f32-val/intervals.dat' index 0 using 2:1:3:4:5 with xerrorbars lc variable, NaN notitle
unset multiplot
